"""The model's chat template, cut into token-level pieces that can only be appended.

The template is rendered once per role with a placeholder as the message text; what
stands before and after the placeholder is the role's wrapper (for Qwen2.5,
`<|im_start|>user\\n` and `<|im_end|>\\n`). Wrappers are tokenized with special tokens
recognised; message text is tokenized with special tokens split into ordinary text, so
nothing a customer types can become a role or turn marker.
"""

from dataclasses import dataclass
from pathlib import Path
from typing import Any

PLACEHOLDER = "\u2063PREFIXDESK-MESSAGE\u2063"


class ChatTemplateError(ValueError):
    """The tokenizer's chat template cannot be used append-only."""


@dataclass(frozen=True)
class Wrapper:
    before: tuple[int, ...]
    after: tuple[int, ...]


ChatMessage = dict[str, str]


class ChatFormat:
    def __init__(self, tokenizer: Any):  # a Hugging Face tokenizer with a chat template
        self.tokenizer = tokenizer
        # The model's name: its checkpoint directory's (a packaged model's directory is named
        # after it); the judges' thresholds are chosen per model.
        self.model_name = Path(str(getattr(tokenizer, "name_or_path", ""))).name
        if not getattr(tokenizer, "chat_template", None):
            raise ChatTemplateError("the tokenizer has no chat template")
        sys_, usr, ast = (
            {"role": "system", "content": "s"},
            {"role": "user", "content": "u"},
            {"role": "assistant", "content": "a"},
        )
        self.first_system = self._wrapper([], "system")
        self.user = self._wrapper([sys_], "user")
        self.assistant = self._wrapper([sys_, usr], "assistant")
        # A system message later in the conversation (per-customer context).
        self.system = self._wrapper([sys_, ast], "system")
        self.generation_prompt = self._encode_template(self._suffix([sys_, usr], None, True))
        if self.generation_prompt != self.assistant.before:
            raise ChatTemplateError(
                "the generation prompt differs from the assistant wrapper; the model's "
                "replies could not be appended as they were generated"
            )
        self.stop_token_ids = frozenset(self._stop_ids())

    def _render(self, messages: list[ChatMessage], generation_prompt: bool = False) -> str:
        text: str = self.tokenizer.apply_chat_template(
            messages, tokenize=False, add_generation_prompt=generation_prompt
        )
        return text

    def _suffix(
        self, history: list[ChatMessage], message: ChatMessage | None, generation_prompt: bool = False
    ) -> str:
        """What the template appends for `message` after `history`: must be append-only."""
        before = self._render(history) if history else ""
        after = self._render(history + ([message] if message else []), generation_prompt)
        if not after.startswith(before):
            raise ChatTemplateError("the chat template rewrites earlier turns (not append-only)")
        return after[len(before) :]

    def _wrapper(self, history: list[ChatMessage], role: str) -> Wrapper:
        piece = self._suffix(history, {"role": role, "content": PLACEHOLDER})
        if piece.count(PLACEHOLDER) != 1:
            raise ChatTemplateError(f"the chat template does not place {role} text once")
        before, after = piece.split(PLACEHOLDER)
        return Wrapper(self._encode_template(before), self._encode_template(after))

    def _encode_template(self, text: str) -> tuple[int, ...]:
        return tuple(self.tokenizer.encode(text, add_special_tokens=False))

    def _stop_ids(self) -> set[int]:
        ids = {self.assistant.after[0]} if self.assistant.after else set()
        if self.tokenizer.eos_token_id is not None:
            ids.add(self.tokenizer.eos_token_id)
        return ids

    def encode_text(self, text: str) -> list[int]:
        """Message text as tokens; special-token strings stay plain text."""
        return list(self.tokenizer.encode(text, add_special_tokens=False, split_special_tokens=True))

    def decode_text(self, token_ids: list[int]) -> str:
        """Generated tokens as text, as the engine streams them (special tokens left out)."""
        return str(self.tokenizer.decode(token_ids, skip_special_tokens=True))

    def message(self, wrapper: Wrapper, text: str) -> list[int]:
        return [*wrapper.before, *self.encode_text(text), *wrapper.after]

    def close_reply(self, generated: list[int]) -> list[int]:
        """Tokens that end a generated reply the way the template ends an assistant turn.

        The generated tokens are kept exactly; if the model stopped on the turn's end
        token, only the rest of the wrapper follows (for Qwen2.5 the newline).
        """
        after = list(self.assistant.after)
        if generated and after and generated[-1] == after[0]:
            return after[1:]
        return after
