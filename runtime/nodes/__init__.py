"""Built-in nodes: LSL and ZeroMQ endpoints, XDF recording, video, window, filter, resample, align."""
