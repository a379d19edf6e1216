"""Is the model's chat template append-only? Each render of a growing conversation must start
with the render before it, or no turn could reuse the cache of the turns before."""

from typing import Any

from backend.authoring.problems import Problem

Message = dict[str, str]


def sample_conversation(turns: int) -> list[Message]:
    """The shape prefixdesk renders: system, greeting, customer context, then turns."""
    messages = [
        {"role": "system", "content": "You are a support assistant."},
        {"role": "assistant", "content": "Hello, how can I help?"},
        {"role": "system", "content": "Customer: Ada"},
    ]
    for turn in range(1, turns + 1):
        messages.append({"role": "user", "content": f"Question {turn}?"})
        messages.append({"role": "assistant", "content": f"Answer {turn}."})
    return messages


def chat_template_problems(tokenizer: Any, max_turns: int = 4) -> list[Problem]:
    """Each render of a growing conversation must start with the render before it."""
    messages = sample_conversation(max_turns)
    previous, previous_what = "", "nothing"
    for count, generation_prompt in _growing_renders(messages):
        what = f"{count} message{'s' if count > 1 else ''}" + (" + generation prompt" * generation_prompt)
        try:
            text = tokenizer.apply_chat_template(
                messages[:count], tokenize=False, add_generation_prompt=generation_prompt
            )
        except Exception as error:  # a template may raise anything, e.g. on role order
            return [Problem("chat-template", "chat_template", f"cannot render {what}: {error}")]
        if not text.startswith(previous):
            detail = f"the render of {what} does not start with the render of {previous_what}"
            return [Problem("not-append-only", "chat_template", detail)]
        previous, previous_what = text, what
    return []


def _growing_renders(messages: list[Message]) -> list[tuple[int, bool]]:
    """(messages, generation prompt?) in the order a conversation grows: before each
    reply, the prompt the reply is generated after."""
    steps = []
    for count in range(1, len(messages) + 1):
        steps.append((count, False))
        if count < len(messages) and messages[count]["role"] == "assistant":
            steps.append((count, True))
    return steps
