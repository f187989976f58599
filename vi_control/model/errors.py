"""Exceptions raised by the model layer: each names the offending file, joint, link or key."""

import difflib
import warnings


class ModelError(ValueError):
    """Base class for every error in a robot description or system file."""


class URDFError(ModelError):
    """The URDF is missing, malformed, or describes something vi_control cannot simulate."""


class SystemConfigError(ModelError):
    """The system YAML is malformed, has a wrong type, or names a joint/link that does not exist."""


def unknown_keys(unknown, allowed) -> str:
    """ "unknown key(s) ['horizn'] (did you mean 'horizon'?)": the error text for keys a YAML schema does not
    know, with the allowed key each typo is closest to (case differences included: 'q' for 'Q')."""
    unknown = sorted(unknown, key=str)
    folded = {a.lower(): a for a in allowed if isinstance(a, str)}
    hints = [
        (k, m[0])
        for k in unknown
        if isinstance(k, str)
        for m in [
            [folded[k.lower()]]
            if k.lower() in folded
            else difflib.get_close_matches(k, list(folded.values()), n=1, cutoff=0.6)
        ]
        if m
    ]
    text = f"unknown key(s) {unknown}"
    if hints:
        text += (
            " (did you mean " + ", ".join(repr(m) if len(unknown) == 1 else f"{m!r} for {k!r}" for k, m in hints) + "?)"
        )
    return text


def renamed_keyword(function: str, old: str, old_value, new: str, new_value):
    """The value of keyword ``new`` of ``function``, or of its deprecated name ``old`` when that was given (with a
    DeprecationWarning naming the replacement). Deprecated names are accepted for one release, then removed."""
    if old_value is None:
        return new_value
    warnings.warn(
        f"{function}: {old}= is deprecated, use {new}= (the old name goes in the next release)",
        DeprecationWarning,
        stacklevel=3,
    )
    return old_value


class RemovedNameError(ImportError):
    """A name the package no longer has; the message names what replaced it (raised for one release after the
    removal, by the module's ``__getattr__``, ``Task.__getattr__`` and the package's finder for removed modules)."""


def removed_name(old: str, new: str) -> RemovedNameError:
    return RemovedNameError(f"{old} was removed: use {new}")
