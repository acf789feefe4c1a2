"""Click options built from `lbee.run.settings.RunSettings`: defaults, choices, ranges and help, written once."""

from __future__ import annotations

import dataclasses

from .settings import RunSettings, _choices

_CHOICE_KNOBS = ("methods", "slicers", "ward", "confidence_from", "split_by", "per_class", "task")


def _lazy_choice_type():
    import click

    class LazyChoice(click.Choice):
        """A click Choice whose values are read from their registry when first needed (keeps ``--help`` fast)."""

        def __init__(self, knob):
            self.knob = knob
            self.case_sensitive = True

        @property
        def choices(self):
            return tuple(_choices(self.knob)) + (("all",) if self.knob == "methods" else ())

        @choices.setter
        def choices(self, value):  # click may assign it; the registry stays the source
            pass

        def convert(self, value, param, ctx):
            try:
                return super().convert(value, param, ctx)
            except click.BadParameter as exc:  # `--method fpdif` had no hint, where `--encoder` had (trial 37)
                import difflib

                near = difflib.get_close_matches(str(value), [str(c) for c in self.choices], n=1)
                if not near:
                    raise
                self.fail(f"{exc.message.rstrip('.')} (did you mean {near[0]!r}?).", param, ctx)

    return LazyChoice


def _LazyChoice(knob):
    return _lazy_choice_type()(knob)


def settings_options(*names):
    """Click options for the named knobs, built from [`RunSettings`][lbee.RunSettings] (defaults, choices, help).

    The command receives each knob under its own name (``methods``, ``slicers``
    as tuples); `settings_from_options` turns them into a
    [`RunSettings`][lbee.RunSettings].
    """
    import click

    fields = {f.name: f for f in dataclasses.fields(RunSettings)}

    def decorate(fn):
        for name in reversed(names):
            f = fields[name]
            m = f.metadata
            flag = flag_of(name)
            decls = [m["short"], flag, name] if m["short"] else [flag, name]
            choices = name in _CHOICE_KNOBS
            kw = {"help": m["help"]}
            if choices:
                kw["type"] = _LazyChoice(name)
            elif m["kind"] is int:
                kw["type"] = click.IntRange(min=m["minimum"], max=m["maximum"]) if m["minimum"] is not None else int
            elif m["kind"] is float:
                kw["type"] = (
                    click.FloatRange(min=m["minimum"], max=m["maximum"])
                    if m["minimum"] is not None or m["maximum"] is not None
                    else float
                )
            # The raw field default: building a RunSettings here would import every registry at `--help` time.
            default = f.default_factory() if f.default is dataclasses.MISSING else f.default
            if name == "join":
                kw.update(type=str, multiple=True, metavar="GROUPS", default=())
            elif m["many"]:
                kw.update(multiple=True, default=["all"] if name == "methods" else list(default), show_default=True)
            elif m["default_text"]:
                kw.update(default=None, show_default=m["default_text"])
            else:
                kw.update(default=default, show_default=True)
            fn = click.option(*decls, **kw)(fn)
        return fn

    return decorate


def flag_of(name):
    """The CLI flag of a knob (``methods`` -> ``--method``, ``k`` -> ``-k``)."""
    f = {f.name: f for f in dataclasses.fields(RunSettings)}[name]
    return f.metadata["flag"] or "--" + name.replace("_", "-")


def as_cli_message(exc):
    """A settings error with each `knob` named by its CLI flag."""
    import re

    known = set(RunSettings.knobs())
    return re.sub(r"`(\w+)`", lambda m: flag_of(m.group(1)) if m.group(1) in known else m.group(0), str(exc))


def settings_from_options(options, **overrides):
    """A [`RunSettings`][lbee.RunSettings] from a command's keyword arguments (knob names only are read)."""
    known = set(RunSettings.knobs())
    values = {k: v for k, v in options.items() if k in known}
    values.update(overrides)
    for key in ("methods", "slicers", "join"):
        if key in values and not values[key]:
            values.pop(key)  # an empty repeatable option means the default
    return RunSettings(**values)
