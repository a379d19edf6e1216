"""The article a reply used when it cites none: the model's choice among the best matches,
read from its next token (the tiny model on vLLM for the mechanics, a script for the logic)."""

import pytest

from backend.bots.registry import NO_KNOWLEDGE, VersionKnowledge
from backend.engine.interface import LabelRead
from backend.prompting.chat_format import ChatFormat
from backend.turns.sources import SourcePicker
from tests.knowledge.test_citations_and_search import EN

KNOWN = VersionKnowledge.of(EN, True, "en")


@pytest.fixture(scope="module")
def tiny_tokenizer_format(tiny_model_dir) -> ChatFormat:
    from transformers import AutoTokenizer

    return ChatFormat(AutoTokenizer.from_pretrained(tiny_model_dir))


QUESTION = "Is there a fee when a client pays an invoice late?"
REPLY = "Yes: a late fee of 2% of the invoice total is added 7 days after the due date."


class Chooses:
    """An engine whose next token is the label at `choice` (0 is "1"), and that keeps the prompt."""

    def __init__(self, choice: int):
        self.choice = choice
        self.prompt: list[int] = []

    async def read_labels(self, prompt_ids, labels, **options):
        self.prompt = list(prompt_ids)
        logprobs = tuple(-0.1 if i == self.choice else -5.0 for i in range(len(labels)))
        return LabelRead(logprobs, len(prompt_ids), 0, 0.01)


async def pick(picker: SourcePicker, engine, known=KNOWN, reply=REPLY):
    context = picker.format.message(picker.format.user, QUESTION)
    return await picker.pick(
        engine, known, context, QUESTION, reply, request_id="sources-1", cache_salt=None, affinity_key=None
    )


async def test_the_models_number_names_one_of_the_best_matches(tiny_tokenizer_format):
    picker = SourcePicker(tiny_tokenizer_format)
    engine = Chooses(0)
    assert [s.id for s in await pick(picker, engine)] == ["late-fees"]  # the best match is listed first
    listed = tiny_tokenizer_format.tokenizer.decode(engine.prompt)
    assert "1. Late fees\n2. Invoice numbers<|im_end|>" in listed
    assert [s.id for s in await pick(picker, Chooses(1))] == ["invoice-numbering"]


async def test_no_help_center_or_no_reply_asks_nothing(tiny_tokenizer_format):
    picker = SourcePicker(tiny_tokenizer_format)
    engine = Chooses(0)
    assert await pick(picker, engine, known=NO_KNOWLEDGE) == []
    assert await pick(picker, engine, reply="  ") == []
    assert engine.prompt == []


async def test_the_choice_is_read_from_the_real_engine(tiny_tokenizer_format, tiny_vllm):
    picker = SourcePicker(tiny_tokenizer_format)
    sources = await pick(picker, tiny_vllm)
    # The tiny model's weights are random: whatever it picks is one of the articles offered.
    assert len(sources) <= 1
    assert all(source.id in {a.id for a in EN} for source in sources)
