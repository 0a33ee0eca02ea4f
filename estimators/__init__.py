"""How each kind of leg becomes a training job: instance catalog, images,
environment, compile-cache settings and prices. One module per kind of leg;
`registry` is the table of them.
"""
from .base import InstanceType, LegKind, Price
from .registry import all_instance_types, instance_of, kind_for_backend, kinds, lookup_instance, suggest_instance

__all__ = ["InstanceType", "LegKind", "Price", "all_instance_types", "instance_of", "kind_for_backend", "kinds",
           "lookup_instance", "suggest_instance"]
