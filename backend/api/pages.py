"""Server-rendered pages (Jinja2, autoescaped) and their static files."""

from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates

from backend.api.deps import provided
from backend.bots.registry import BotRegistry
from backend.config import PROJECT_ROOT
from backend.errors import NotFound

TEMPLATES_DIR = PROJECT_ROOT / "templates"
templates = Jinja2Templates(directory=TEMPLATES_DIR)
router = APIRouter(include_in_schema=False)
Bots = Annotated[BotRegistry, Depends(provided(BotRegistry))]
FAVICON = TEMPLATES_DIR / "static" / "favicon.svg"
# The demo's Chinese shop (an appliance store) has a page of its own; other bots show on `/`.
CHINESE_SHOP_BOT = "appliance-zh"


def static_files() -> StaticFiles:
    return StaticFiles(directory=Path(TEMPLATES_DIR / "static"))


def _listed(bots: BotRegistry) -> list[dict[str, str]]:
    return [
        {
            "slug": slug,
            "name": live.definition.name,
            "language": live.definition.language,
            "page": "/zh" if slug == CHINESE_SHOP_BOT else f"/?bot={slug}",
        }
        for slug, live in bots.items()
    ]


@router.get("/", response_class=HTMLResponse)
async def demo_shop(request: Request, registry: Bots, bot: str = "shop-en") -> Response:
    """A demo shop page with the chat widget embedded, as a shop would embed it."""
    bots = _listed(registry)
    if bot not in {b["slug"] for b in bots}:
        bot = "shop-en"
    if bot == CHINESE_SHOP_BOT:
        return RedirectResponse("/zh")
    return templates.TemplateResponse(request, "shop.html", {"bot": bot, "bots": bots})


@router.get("/zh", response_class=HTMLResponse)
async def chinese_demo_shop(request: Request, registry: Bots) -> HTMLResponse:
    """The demo's Chinese shop (lang="zh"), embedding the Chinese bot."""
    if CHINESE_SHOP_BOT not in registry:
        raise NotFound(f"the Chinese demo shop needs the bot {CHINESE_SHOP_BOT!r} in prompts/")
    bots = _listed(registry)
    return templates.TemplateResponse(request, "shop-zh.html", {"bot": CHINESE_SHOP_BOT, "bots": bots})


@router.get("/favicon.ico")
async def favicon() -> FileResponse:
    """Browsers ask for /favicon.ico where a page names no icon (the API reference, JSON)."""
    return FileResponse(FAVICON, media_type="image/svg+xml")


@router.get("/console", response_class=HTMLResponse)
async def agent_console(request: Request, bots: Bots) -> HTMLResponse:
    """The agents' console (signs in with an API token, then talks to the agents' API)."""
    return templates.TemplateResponse(request, "console.html", {"bots": _listed(bots)})


@router.get("/admin", response_class=HTMLResponse)
async def admin_page(request: Request, bots: Bots) -> HTMLResponse:
    """The admin page (admin token): QPS, response times, cache hit rate, engine load."""
    return templates.TemplateResponse(request, "admin.html", {"bots": _listed(bots)})
