import pytest

from tests.worlds.factories import make_user, make_world


@pytest.fixture
def owner(db):
    return make_user("owner")


@pytest.fixture
def outsider(db):
    return make_user("outsider")


@pytest.fixture
def world(owner):
    return make_world(owner, title="Snowy Pines", slug="snowy-pines")


@pytest.fixture
def draft(owner):
    return make_world(owner, title="Secret Draft", slug="secret-draft", status="draft")


@pytest.fixture
def owner_client(client, owner):
    client.force_login(owner)
    return client


@pytest.fixture
def outsider_client(client, outsider):
    client.force_login(outsider)
    return client
