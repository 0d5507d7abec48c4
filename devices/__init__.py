"""Device profiles (Jetson Orin Nano/NX/AGX, Xavier NX, desktop GPU, CPU), detection, telemetry
and memory placement. Imports nothing of the project."""
from edgert.devices.detect import Detection, Gpu, detect
from edgert.devices.placement import PlacementError, check_placement, measure_peak_memory
from edgert.devices.profile import DeviceProfile, PowerMode, ProfileError, load_profile, profiles
from edgert.devices.telemetry import Sampler, parse_nvidia_smi, parse_tegrastats

__all__ = ["Detection", "DeviceProfile", "Gpu", "PlacementError", "PowerMode", "ProfileError",
           "Sampler", "check_placement", "detect", "load_profile", "measure_peak_memory",
           "parse_nvidia_smi", "parse_tegrastats", "profiles"]
