"""Server-rendered pages (Jinja2, autoescaped) and their static files."""

from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates

from backend.api.deps import provided
from backend.config import PROJECT_ROOT
from backend.prompting.registry import BotRegistry

TEMPLATES_DIR = PROJECT_ROOT / "templates"
templates = Jinja2Templates(directory=TEMPLATES_DIR)
router = APIRouter(include_in_schema=False)
Bots = Annotated[BotRegistry, Depends(provided(BotRegistry))]


def static_files() -> StaticFiles:
    return StaticFiles(directory=Path(TEMPLATES_DIR / "static"))


def _listed(bots: BotRegistry) -> list[dict[str, str]]:
    return [
        {"slug": slug, "name": live.definition.name, "language": live.definition.language}
        for slug, live in bots.items()
    ]


@router.get("/", response_class=HTMLResponse)
async def demo_shop(request: Request, registry: Bots, bot: str = "shop-en") -> HTMLResponse:
    """A demo shop page with the chat widget embedded, as a shop would embed it."""
    bots = _listed(registry)
    if bot not in {b["slug"] for b in bots}:
        bot = "shop-en"
    return templates.TemplateResponse(request, "shop.html", {"bot": bot, "bots": bots})


@router.get("/console", response_class=HTMLResponse)
async def agent_console(request: Request, bots: Bots) -> HTMLResponse:
    """The agents' console (signs in with an API token, then talks to the agents' API)."""
    return templates.TemplateResponse(request, "console.html", {"bots": _listed(bots)})


@router.get("/admin", response_class=HTMLResponse)
async def admin_page(request: Request, bots: Bots) -> HTMLResponse:
    """The admin page (admin token): QPS, response times, cache hit rate, engine load."""
    return templates.TemplateResponse(request, "admin.html", {"bots": _listed(bots)})
