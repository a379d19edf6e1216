"""What a reply shown as the model wrote it stands on, under it for the customer to open: each
cited article with the passage of it that matches the question and the reply best, or, for a
bot without a help center, the line of its policy that matches the question best."""

from backend.knowledge.citations import Source
from backend.languages import in_language_or_english
from backend.retrieval.terms import terms
from backend.turns.decisions import AcceptedMessage

POLICY_TITLES = {  # a language without one gets the English
    "en": "Our policy",
    "zh": "服务政策",
    "es": "Nuestras condiciones",
    "fr": "Nos conditions",
    "de": "Unsere Bedingungen",
    "pt": "Nossas condições",
    "it": "Le nostre condizioni",
}


def with_passages(message: AcceptedMessage, sources: list[Source], reply: str) -> list[dict[str, str | None]]:
    definition = message.bot.definition
    question, language = message.user.text, definition.language
    if not sources:
        if definition.knowledge:  # a help center's lines are its articles': they come cited
            return []
        best = definition.reference.shown(question, 1)
        title = in_language_or_english(POLICY_TITLES, language)
        return [{"id": "policy", "title": title, "url": None, "passage": best[0]}] if best else []
    cites = []
    for source in sources:
        article = message.knowledge.knowledge.get(source.id)
        passage = best_passage(article.text, f"{question}\n{reply}", language) if article else None
        cites.append({**source.as_dict(), "passage": passage})
    return cites


def best_passage(text: str, about: str, language: str) -> str | None:
    """The line of `text` (not a heading) that shares the most search terms with `about`."""
    wanted = set(terms(about, language))
    best, shared = None, 0
    for raw in text.splitlines():
        line = raw.strip().removeprefix("- ").removeprefix("* ").strip()
        if not line or raw.lstrip().startswith("#"):
            continue
        if (count := len(wanted & set(terms(line, language)))) > shared:
            best, shared = line, count
    return best
