"""The built-in families, one package each, written against the public family API
(``hermes_sdk.plugin``, ``hermes_sdk.errors``, ``hermes_sdk.hookspecs``) like a third party's."""
