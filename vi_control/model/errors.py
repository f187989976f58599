"""Exceptions raised by the model layer: each names the offending file, joint, link or key."""

import difflib


class ModelError(ValueError):
    """Base class for every error in a robot description or system file."""


class URDFError(ModelError):
    """The URDF is missing, malformed, or describes something vi_control cannot simulate."""


class SystemConfigError(ModelError):
    """The system YAML is malformed, has a wrong type, or names a joint/link that does not exist."""


def unknown_keys(unknown, allowed) -> str:
    """"unknown key(s) ['horizn'] (did you mean 'horizon'?)": the error text for keys a YAML schema does not
    know, with the allowed key each typo is closest to (case differences included: 'q' for 'Q')."""
    unknown = sorted(unknown, key=str)
    folded = {a.lower(): a for a in allowed if isinstance(a, str)}
    hints = [(k, m[0]) for k in unknown if isinstance(k, str)
             for m in [[folded[k.lower()]] if k.lower() in folded else
                       difflib.get_close_matches(k, list(folded.values()), n=1, cutoff=0.6)] if m]
    text = f"unknown key(s) {unknown}"
    if hints:
        text += " (did you mean " + ", ".join(repr(m) if len(unknown) == 1 else f"{m!r} for {k!r}"
                                               for k, m in hints) + "?)"
    return text
