"""Commands around the service that are no part of a message's path: the local demo."""
