"""Resource families on the client (``client.runs``, ``client.sessions``, ...): one module each.

A resource is a thin typed facade over the client's executor: it maps keyword arguments to a
capability input and calls ``executor.request(spec, input, options)``. A family outside the core
names its resource class in its :class:`~hermes_sdk.plugin.Family`; ``client.resource(Class)`` builds it.
"""
