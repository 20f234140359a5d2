"""The model checker's errors, in one module every other ``nice`` module may import.

They live apart from the code that raises them so that a low module (the
scripted sends, concolic discovery) can raise a scenario error without
importing the scenario builder, which sits above the transition relation.
Each is a :class:`~netsleuth.errors.NetsleuthError`: the CLI prints it as
``error: <problem> -- fix: <fix>`` and exits 2.
"""

from __future__ import annotations

from netsleuth.errors import NetsleuthError


class ModelCheckError(NetsleuthError):
    """Base of every error the model checker raises for bad input."""


class ScenarioError(ModelCheckError):
    """A model scenario cannot be built: unknown name, host or script, or a topology that does not fit."""


class AppSpecError(ModelCheckError):
    """An ``app:`` spec names no in-process app (unknown name, unimportable module, not an App subclass)."""


class AppError(ModelCheckError):
    """An app broke the API's contract (for example, asked for stats without declaring it)."""


class PropertyError(ModelCheckError):
    """A property name resolves to no property class."""


class CheckError(ModelCheckError):
    """``netsleuth check`` options that do not make sense (unknown strategy, order, fault, bound)."""


class ConversionError(ModelCheckError):
    """A counterexample cannot become the inputs of a real run (``netsleuth cex-inputs``)."""


__all__ = ["AppError", "AppSpecError", "CheckError", "ConversionError", "ModelCheckError", "PropertyError",
           "ScenarioError"]
