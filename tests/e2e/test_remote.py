"""README's "Share runs: a DVC remote", as printed: a finished pipeline pushed to a local folder remote
(s3:// and gs:// remotes take the same commands), cloned fresh elsewhere and pulled: there `dvc status`
is clean, `dvc repro` runs no stage, and every output, the finetune stages' persisted runs included, is
the one pushed. The real dvc.yaml with placeholder outputs (the placeholder_template fixture): a stage
that reran would train on placeholders and fail. Every output under data/ comes from the remote, none from
git: a `cache: false` run folder would not be pushed, and would reach the clone only if committed to git."""

import shlex
import subprocess

from tests.support import GIT, REPO, copy_repo, dvc, every_output, ok, ran_stages


def readme_commands() -> list[list[str]]:
    """The commands of README's remote block, one list of words per command (`&&` splits a line)."""
    text = (REPO / "README.md").read_text()
    block = text.split("## Share runs: a DVC remote")[1].split("```bash\n")[1].split("```")[0]
    commands = []
    for line in block.splitlines():
        words = shlex.split(line, comments=True)
        while "&&" in words:
            commands.append(words[: words.index("&&")])
            words = words[words.index("&&") + 1 :]
        commands += [words] if words else []
    return commands


def test_finished_runs_pushed_to_a_remote_and_pulled_into_a_fresh_clone_train_nothing(tmp_path, placeholder_template):
    source, outs = placeholder_template
    origin = copy_repo(source, tmp_path / "origin")
    pushed = every_output(origin, outs)
    assert any(out.startswith("data/runs/studies/") for out in pushed) and "data/runs/focus" in pushed
    places = {"<folder>": str(tmp_path / "remote"), "<repository>": str(origin), "<clone>": str(tmp_path / "clone")}
    cwd = origin
    for words in readme_commands():
        words = [places.get(word, word) for word in words]
        if words[0] == "cd":
            cwd = tmp_path / words[1]
        elif words[0] == "git":
            subprocess.run(GIT + words[1:], cwd=cwd, check=True, capture_output=True)
        else:
            assert words[0] == "dvc", words
            ok(dvc(cwd, *words[1:]))
    clone = tmp_path / "clone"
    assert cwd == clone and (tmp_path / "remote").is_dir()
    assert "Data and pipelines are up to date." in ok(dvc(clone, "status"))
    assert ran_stages(ok(dvc(clone, "repro"))) == []
    assert every_output(clone, outs) == pushed
    in_git = subprocess.run(["git", "ls-files", "data"], cwd=clone, capture_output=True, text=True, check=True)
    assert [path for path in in_git.stdout.split() if not path.endswith(".gitignore")] == []  # all from the remote
