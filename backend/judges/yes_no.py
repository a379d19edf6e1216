"""A yes/no question to the model, answered by reading two probabilities, never free text.

The prompt is a chat: the judge's instruction as the system message, each labelled example
as a user turn answered "yes" or "no", then the item judged and the generation prompt. All
but the item is the same for every request of a bot, so after the first request the engine
serves it from its prefix cache and a judgement costs about the item's own tokens.

The answer is the model's probability of "yes" against "no" as its next token, from vLLM's
log-probabilities of those label tokens (every capitalisation that is one token, summed) among
the likeliest next tokens. Where neither is among them, the odds are even: not a yes.
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass

from backend.engine.interface import Engine
from backend.prompting.chat_format import ChatFormat
from backend.prompting.judge_prompts import JudgePrompt

YES_SPELLINGS = ("yes", "Yes", "YES")
NO_SPELLINGS = ("no", "No", "NO")


@dataclass(frozen=True)
class Judgement:
    p_yes: float  # P(yes) / (P(yes) + P(no)) for the next token
    answer: bool  # p_yes above the judge's threshold
    prompt_tokens: int
    cached_tokens: int
    seconds: float


class YesNoLabels:
    """The tokens that start "yes" and "no" for this tokenizer, and the answer they give."""

    def __init__(self, chat_format: ChatFormat):
        self.yes_ids = _single_tokens(chat_format, YES_SPELLINGS)
        self.no_ids = _single_tokens(chat_format, NO_SPELLINGS)
        if not self.yes_ids or not self.no_ids or set(self.yes_ids) & set(self.no_ids):
            raise ValueError("the tokenizer has no single-token spellings of yes and no")

    async def ask(
        self,
        engine: Engine,
        prompt_ids: Sequence[int],
        threshold: float,
        *,
        request_id: str,
        cache_salt: str | None,
        affinity_key: str | None = None,
    ) -> Judgement:
        """The model's yes or no as the next token after `prompt_ids` (which end in a generation prompt)."""
        read = await engine.read_labels(
            prompt_ids,
            [*self.yes_ids, *self.no_ids],
            request_id=request_id,
            cache_salt=cache_salt,
            affinity_key=affinity_key,
        )
        yes = _logsumexp(read.logprobs[: len(self.yes_ids)])
        no = _logsumexp(read.logprobs[len(self.yes_ids) :])
        p_yes = 1.0 / (1.0 + math.exp(no - yes)) if math.isfinite(yes) or math.isfinite(no) else 0.5
        return Judgement(p_yes, p_yes > threshold, read.prompt_tokens, read.cached_tokens, read.seconds)


class YesNoJudge:
    """A few-shot judge: its instruction and examples are a fixed prefix, the item follows."""

    def __init__(self, prompt: JudgePrompt, chat_format: ChatFormat):
        self.name = prompt.name
        self.instruction = prompt.instruction
        self.threshold = prompt.threshold_for(chat_format.model_name)
        self.labels = YesNoLabels(chat_format)
        self._format = chat_format
        ids = chat_format.message(chat_format.first_system, prompt.instruction)
        for example in prompt.examples:
            ids += chat_format.message(chat_format.user, example.item)
            ids += chat_format.message(chat_format.assistant, "yes" if example.answer else "no")
        self.prefix_ids: tuple[int, ...] = tuple(ids)

    def prompt_for(self, item: str) -> list[int]:
        return [
            *self.prefix_ids,
            *self._format.message(self._format.user, item),
            *self._format.generation_prompt,
        ]

    def prompt_after(self, context_ids: Sequence[int]) -> list[int]:
        """The instruction asked at the end of a conversation's own (cached) context instead."""
        return [
            *context_ids,
            *self._format.message(self._format.system, self.instruction),
            *self._format.generation_prompt,
        ]

    async def ask(
        self,
        engine: Engine,
        item: str,
        *,
        request_id: str,
        cache_salt: str | None,
        affinity_key: str | None = None,
    ) -> Judgement:
        return await self.labels.ask(
            engine,
            self.prompt_for(item),
            self.threshold,
            request_id=request_id,
            cache_salt=cache_salt,
            affinity_key=affinity_key,
        )


def _single_tokens(chat_format: ChatFormat, spellings: Sequence[str]) -> tuple[int, ...]:
    ids = []
    for spelling in spellings:
        encoded = chat_format.encode_text(spelling)
        if len(encoded) == 1 and encoded[0] not in ids:
            ids.append(encoded[0])
    return tuple(ids)


def _logsumexp(values: Sequence[float]) -> float:
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return -math.inf
    top = max(finite)
    return top + math.log(sum(math.exp(v - top) for v in finite))
