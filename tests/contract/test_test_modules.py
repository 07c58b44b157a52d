"""pytest imports test modules by basename (rootdir import mode, no __init__.py under tests/), so two
test modules of one name in different folders stop the whole run at collection."""

from collections import Counter

from tests.support import REPO


def test_no_two_test_modules_share_a_file_name():
    names = Counter(path.name for path in (REPO / "tests").rglob("test_*.py"))
    assert not [name for name, count in names.items() if count > 1]
