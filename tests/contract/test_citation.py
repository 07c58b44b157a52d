"""The project's version is defined once, src.__version__; CITATION.cff and pyproject.toml repeat it (files that
GitHub, Zenodo and pip read without importing the code), so a release that bumps one and not the others fails here.
CITATION.cff is Citation File Format 1.2.0 (checked with `cffconvert --validate`, cffconvert 2.0.0, when written):
this test holds it to the schema's required keys and the three studies the pipeline reproduces."""

import tomllib

import yaml

from src import __version__
from tests.support import REPO


def test_citation_cff_has_the_required_keys_the_three_studies_and_the_code_version():
    citation = yaml.safe_load((REPO / "CITATION.cff").read_text())
    assert citation["cff-version"] == "1.2.0"
    assert {"cff-version", "message", "title", "authors"} <= set(citation)
    assert citation["version"] == __version__
    references = citation["references"]
    assert all({"type", "title", "authors"} <= set(reference) for reference in references)
    titles = [" ".join(reference["title"].split()) for reference in references]
    assert titles == [
        "Investigating Transferability in Pretrained Language Models",
        "How much does pre-trained information help? Partially re-initializing BERT during fine-tuning to analyze "
        "the contribution of layers",
        "BERT Goes to College: Understanding the Role of Pretrained Layers During Finetuning",
    ]
    assert references[0]["url"] == "https://aclanthology.org/2020.findings-emnlp.125/"


def test_pyproject_version_is_the_code_version():
    assert tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"] == __version__
