"""Imported by the fork server of the engine's processes (`preloaded_processes.PRELOAD`): loads the
model's tokenizer there once, before any core is forked from it (`model_tokenizer`)."""

from backend.engine.model_tokenizer import preload_for_core

preload_for_core()
