"""Lexical search over a bot's fixed texts: which lines answer a customer's question."""
