"""JanusVLN: vision-and-language navigation with a dual implicit memory of fixed size.

Two causal frame encoders, visual-semantic and spatial-geometric (the stand-in for VGGT,
pretrained here on depth and relative pose, then frozen), keep per-layer key/value caches of
the episode's first frames and a sliding window of recent ones (model.py, memory.py); a
policy over the instruction and the fused tokens picks FORWARD, TURN_LEFT, TURN_RIGHT or
STOP (train.py: teacher forcing, then DAgger). No VGGT or Qwen weights can be downloaded
here: both encoders are small models pretrained by this package in procedural houses
(simulate.py, env.py); data.py reads VLN-CE R2R episode files.
"""
from edgert.runtime.plugin import Method, lazy

METHOD = Method(name="janusvln", kind="stream", train=lazy("edgert.methods.janusvln.train:train"),
                export=lazy("edgert.methods.janusvln.export:export"),
                evaluate=lazy("edgert.methods.janusvln.evaluate:evaluate"),
                figures=lazy("edgert.methods.janusvln.figures:figures"), pipeline="nav",
                demos={"nav": lazy("edgert.methods.janusvln.demo:nav")},
                sources=lazy("edgert.methods.janusvln.demo:sources"),
                formats=("r2r",))
