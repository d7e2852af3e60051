"""What the relay records is cleaned of credentials, whatever shape the JSON takes (property-tested)."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from nullius_core.relay.cleaning import REMOVED, Cleaner, credential_name

OWN = "relay-own-key-7d2f0c9e1b"
SECRETS = [
    "sk-proj-4f8a9c2e1b7d6a5f3e0c9b8a7d6e5f4a",
    "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWx-yz0123456789",
    "sk-or-v1-0123456789abcdef0123456789abcdef",
    "nlr-Zx9q_LmN3oP4rS5tU6vW7xY8",
    "AKIAIOSFODNN7EXAMPLE",
    "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    OWN,
]
CREDENTIAL_KEYS = ["authorization", "api_key", "x-api-key", "OPENAI_API_KEY", "token", "client_secret", "password"]

text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=20)
secret = st.sampled_from(SECRETS)
# a string that may carry a secret anywhere inside it
carrier = st.builds(lambda a, s, b, put: a + s + b if put else a + b, text, secret, text, st.booleans())
leaf = st.one_of(st.none(), st.booleans(), st.integers(), carrier)
key = st.one_of(text, st.sampled_from(CREDENTIAL_KEYS))
tree = st.recursive(leaf, lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(key, inner, max_size=4)), max_leaves=25)


@settings(max_examples=300, deadline=None)
@given(tree)
def test_no_secret_survives_cleaning(obj):
    cleaned = json.dumps(Cleaner([OWN])(obj), ensure_ascii=False)
    for s in SECRETS:
        assert s not in cleaned


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(CREDENTIAL_KEYS), text.filter(bool), min_size=1))
def test_values_under_credential_names_are_removed(obj):
    assert set(Cleaner()(obj).values()) == {REMOVED}


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(["model", "messages", "content", "role", "max_tokens"]), st.text(alphabet="abc xyz.", max_size=30)))
def test_ordinary_requests_are_kept_as_they_are(obj):
    assert Cleaner([OWN])(obj) == obj


def test_credential_names():
    assert all(credential_name(k) for k in CREDENTIAL_KEYS + ["Authorization", "X-Api-Key", "proxy-authorization", "cookie"])
    assert not any(credential_name(k) for k in ["model", "max_tokens", "input_tokens", "tokenizer", "keyword"])
