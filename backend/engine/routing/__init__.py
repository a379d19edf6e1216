"""Routing requests over a pool of vLLM replicas so their prefix caches keep hitting."""
