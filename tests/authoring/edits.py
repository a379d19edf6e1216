"""Bots and chat templates edited so that the prompt checks have something to find."""

import shutil
from collections.abc import Callable
from pathlib import Path

from backend.config import PROJECT_ROOT

# A template that renders only the last few messages: earlier turns vanish from the prompt.
LAST_MESSAGES_TEMPLATE = (
    "{%- for message in messages[-KEEP:] %}"
    "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)


def edited_bot(tmp_path: Path, file: str, edit: Callable[[str], str]) -> Path:
    """shop-en copied to a temp prompts dir as `test-bot`, with `edit` applied to one file's text."""
    folder = tmp_path / "prompts" / "test-bot"
    shutil.copytree(PROJECT_ROOT / "prompts" / "shop-en", folder)
    path = folder / file
    path.write_text(edit(path.read_text(encoding="utf-8")), encoding="utf-8")
    return folder
