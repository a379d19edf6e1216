"""Small bots with help centers, written into a test's own prompts folder."""

import shutil
from pathlib import Path

from backend.config import PROJECT_ROOT

SYSTEM = """You are the assistant of {{ company }}. Answer from the help center; cite [id].

{{ policy }}
{% if articles %}
# Help center
{% for article in articles %}
## [{{ article.id }}] {{ article.title }}
{{ article.text }}
{% endfor %}{% endif %}"""

EN_ARTICLES = {
    "invoice-numbering": (
        "Invoice numbers",
        None,
        "Invoices are numbered INV-0001 onwards, one series per company.",
    ),
    "late-fees": (
        "Late fees on overdue invoices",
        "https://help.example.com/late-fees",
        "A late fee of 2% of the invoice total is added 7 days after the due date.",
    ),
    "two-factor": (
        "Two-factor sign-in",
        None,
        "Turn on two-factor authentication under Settings > Security.",
    ),
    "bank-sync": ("Bank sync errors", None, "A bank connection must be renewed every 90 days."),
}
ZH_ARTICLES = {
    "install": ("上门安装", None, "空调安装免费，冰箱和洗衣机不需要安装。"),
    "warranty": ("保修政策", None, "整机保修三年，压缩机保修十年。"),
    "delivery": ("配送时间", None, "下单后三天内送达，偏远地区五天。"),
}


def article_file(title: str, url: str | None, text: str) -> str:
    front = f"title: {title}\n" + (f"url: {url}\n" if url else "")
    return f"---\n{front}---\n{text}\n"


def write_help_bot(
    prompts: Path,
    slug: str,
    *,
    language: str = "en",
    articles: dict[str, tuple[str, str | None, str]] | None = None,
    max_prefix_tokens: int | None = None,
) -> Path:
    """A bot with a help center; over `max_prefix_tokens`, its articles come beside questions."""
    folder = prompts / slug
    (folder / "knowledge").mkdir(parents=True)
    knowledge = (
        "" if max_prefix_tokens is None else f"\n[knowledge]\nmax_prefix_tokens = {max_prefix_tokens}\n"
    )
    (folder / "bot.toml").write_text(
        f'name = "{slug}"\nlanguage = "{language}"\ngreeting = "Hello!"\n\n[vars]\ncompany = "Example"\n'
        f"{knowledge}",
        encoding="utf-8",
    )
    (folder / "system.j2").write_text(SYSTEM, encoding="utf-8")
    (folder / "policy.md").write_text("Support answers in the chat.\n", encoding="utf-8")
    shutil.copy(PROJECT_ROOT / "prompts" / "shop-en" / "context.j2", folder / "context.j2")
    chosen = articles if articles is not None else (ZH_ARTICLES if language == "zh" else EN_ARTICLES)
    for article_id, (title, url, text) in chosen.items():
        (folder / "knowledge" / f"{article_id}.md").write_text(
            article_file(title, url, text), encoding="utf-8"
        )
    return folder


def help_prompts(tmp_path: Path) -> Path:
    """A prompts folder with the shipped bots' shared judges and three help-center bots: English
    in its prefix, English beside questions, Chinese beside questions."""
    prompts = tmp_path / "prompts"
    shutil.copytree(PROJECT_ROOT / "prompts" / "_judges", prompts / "_judges")
    write_help_bot(prompts, "help-en")
    write_help_bot(prompts, "help-search-en", max_prefix_tokens=10)
    write_help_bot(prompts, "help-search-zh", language="zh", max_prefix_tokens=10)
    return prompts
