"""The app's fixtures (app_world.py): a running `nullius app`, and a real browser."""

from app_world import app, app_env, browser, page  # noqa: F401 - pytest finds fixtures by name
from viewer_world import viewer_app, viewer_world  # noqa: F401,E402 - the viewer's jobs, made once a session
