"""Device profiles (Jetson Orin Nano/NX/AGX, Xavier NX, desktop GPU, CPU), detection, telemetry
and memory placement. Imports nothing of the project."""
from devices.detect import Detection, Gpu, detect
from devices.placement import PlacementError, check_placement, measure_peak_memory
from devices.profile import DeviceProfile, PowerMode, ProfileError, load_profile, profiles
from devices.telemetry import Sampler, parse_nvidia_smi, parse_tegrastats

__all__ = ["Detection", "DeviceProfile", "Gpu", "PlacementError", "PowerMode", "ProfileError",
           "Sampler", "check_placement", "detect", "load_profile", "measure_peak_memory",
           "parse_nvidia_smi", "parse_tegrastats", "profiles"]
