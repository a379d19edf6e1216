"""A bot's help center: its articles, the ones that match a question, and the ones a reply cites."""
