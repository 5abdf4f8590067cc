"""The application layer: the client, the command line, the built-in families' registration and the
deprecated paths. It sits above the kernel (``hermes_sdk._core``) and the families
(``hermes_sdk._families``) and may name both; the kernel names no family and nothing here."""
