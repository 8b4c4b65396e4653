"""A mypy plugin (pyproject.toml [tool.mypy] plugins): ``.get("key")`` on a TypedDict with a literal key the
TypedDict does not declare is an error, as ``["key"]`` already is. mypy itself types such a ``.get`` as
``object`` and says nothing, so a renamed snapshot field read with ``.get`` would pass the checker."""

from collections.abc import Callable

from mypy.errorcodes import TYPEDDICT_ITEM
from mypy.plugin import MethodContext, Plugin
from mypy.plugins.default import typed_dict_get_callback
from mypy.typeops import try_getting_str_literals
from mypy.types import Type, TypedDictType


def _checked_get(ctx: MethodContext) -> Type:
    if isinstance(ctx.type, TypedDictType) and ctx.args and len(ctx.args[0]) == 1:
        for key in try_getting_str_literals(ctx.args[0][0], ctx.arg_types[0][0]) or ():
            if key not in ctx.type.items:
                ctx.api.fail(f'TypedDict "{ctx.type.fallback.type.name}" has no key "{key}"', ctx.context,
                             code=TYPEDDICT_ITEM)
    return typed_dict_get_callback(ctx)


class TypedDictGetKeys(Plugin):
    def get_method_hook(self, fullname: str) -> Callable[[MethodContext], Type] | None:
        return _checked_get if fullname == "typing.Mapping.get" else None


def plugin(version: str) -> type[Plugin]:
    return TypedDictGetKeys
