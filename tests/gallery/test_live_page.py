"""The Live page and the home page's Live row: the shells live.js fills from GET /api/live/."""

import re

import pytest
from django.test import Client

from tests.worlds.factories import make_world

pytestmark = pytest.mark.django_db


def test_the_live_page_hands_the_live_api_to_live_js():
    response = Client().get("/live/")
    assert response.status_code == 200
    html = response.content.decode()
    assert 'data-live-api="/api/live/"' in html and "js/live.js" in html
    assert "Nothing is being played right now" in html  # the empty state, shown by live.js
    assert 'href="/c/live/"' in html


def test_the_site_nav_links_the_live_page():
    html = Client().get("/").content.decode()
    assert 'href="/live/"' in html


def test_the_home_page_has_a_live_row_of_eight_above_the_other_rows_hidden_until_one_runs():
    make_world(title="Quiet Dunes")
    html = Client().get("/").content.decode()
    tag = re.search(r'<section id="home-live"[^>]*>', html).group(0)
    assert 'data-limit="8"' in tag and " hidden" in tag and 'data-hide-empty="true"' in tag
    assert html.index('id="home-live"') < html.index("Quiet Dunes")
    assert "js/live.js" in html
