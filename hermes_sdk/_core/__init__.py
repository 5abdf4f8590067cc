"""The implementation of hermes_sdk: private. Import from hermes_sdk, hermes_sdk.types,
hermes_sdk.errors or hermes_sdk.plugin."""
