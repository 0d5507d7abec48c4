"""The one clock of edgert: LSL's local_clock (monotonic seconds, shared by every process)."""
from pylsl import local_clock

__all__ = ["local_clock"]
