"""Which liblsl configuration is in force, and a quiet liblsl when there is none.

liblsl reads the first of: $LSLAPICFG, ./lsl_api.cfg, ~/lsl_api/lsl_api.cfg,
/etc/lsl_api/lsl_api.cfg; else its defaults, which log two INFO lines from every process that
touches LSL, and an ERR line whenever a stream's source ends. With no file in force, edgert
keeps every default but lets liblsl log fatal errors only: edgert says itself, once and in
words, when a stream is lost and when it is back. A user's file is always left as it is.
"""
from __future__ import annotations

import configparser
import os
from pathlib import Path

QUIET = b"[log]\nlevel = -3\n"
DEFAULT_SCOPE = "site"  # liblsl's default [multicast] ResolveScope


def config_file() -> Path | None:
    """The configuration file liblsl reads, if any."""
    env = os.environ.get("LSLAPICFG")
    candidates = [Path(env)] if env else []
    candidates += [Path("lsl_api.cfg"), Path.home() / "lsl_api" / "lsl_api.cfg",
                   Path("/etc/lsl_api/lsl_api.cfg")]
    return next((p.resolve() for p in candidates if p.is_file()), None)


def resolve_scope(path: Path | None) -> str:
    """How far stream discovery reaches: machine, link, site, organization or global."""
    if path is None:
        return DEFAULT_SCOPE
    parser = configparser.ConfigParser(inline_comment_prefixes=(";", "#"), strict=False)
    parser.read(path)
    return parser.get("multicast", "ResolveScope", fallback=DEFAULT_SCOPE).strip()


def quiet_defaults() -> None:
    """With no file in force, keep liblsl's defaults but only its fatal errors.
    Must run before the first LSL object; does nothing if the library cannot take it."""
    import pylsl

    if config_file() is None and hasattr(pylsl.lib.lib, "lsl_set_config_content"):
        pylsl.lib.lib.lsl_set_config_content(QUIET)
