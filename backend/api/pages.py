"""Server-rendered pages (Jinja2, autoescaped)."""

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates

from backend.config import PROJECT_ROOT

templates = Jinja2Templates(directory=PROJECT_ROOT / "templates")
router = APIRouter(include_in_schema=False)


@router.get("/", response_class=HTMLResponse)
async def index(request: Request) -> HTMLResponse:
    chat = request.app.state.chat
    bots = [
        {
            "slug": slug,
            "name": live.definition.name,
            "greeting": live.definition.greeting,
            "prefix_tokens": len(live.prefix.token_ids),
        }
        for slug, live in chat.bots.items()
    ]
    return templates.TemplateResponse(request, "index.html", {"bots": bots, "ready": chat.ready})
