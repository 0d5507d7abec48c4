"""Sci2Pol-Bench in its own format: a folder of `task1.jsonl` ... `task18.jsonl`, one JSON
object a line with `id`, `query` (the whole prompt) and `answer` (a letter for multiple
choice, the reference text for open-ended tasks; task 15 may give `sci_paper` and
`expert_brief`). Multiple-choice options are the letters the query lists, `(A)` or `A.`."""
from __future__ import annotations

import json
import re
from pathlib import Path

from edgert.runtime.plugin import DataError
from edgert.methods.sci2pol.tasks import Task, build_empty

LETTER = re.compile(r"(?:^|\s)\(?([A-H])[).:]\s")


def read_bench(folder: Path) -> list[Task]:
    """The tasks whose files the folder holds, in task order."""
    folder = Path(folder)
    if not folder.is_dir():
        raise DataError(f"{folder}: not a folder; give the folder that holds task1.jsonl ... "
                        "task18.jsonl")
    tasks = [t for t in build_empty() if (folder / f"task{t.number}.jsonl").exists()]
    if not tasks:
        raise DataError(f"{folder}: no task1.jsonl ... task18.jsonl here")
    for task in tasks:
        path = folder / f"task{task.number}.jsonl"
        for line_no, line in enumerate(path.read_text().splitlines(), 1):
            if line.strip():
                task.items.append(_item(task, path, line_no, line))
    return tasks


def _item(task: Task, path: Path, line_no: int, line: str) -> dict:
    where = f"{path}: line {line_no}"
    try:
        row = json.loads(line)
        query, answer = str(row["query"]), str(row["answer"]).strip()
    except (ValueError, KeyError) as e:
        raise DataError(f"{where}: needs JSON with 'query' and 'answer' ({e})") from e
    if task.kind == "open":
        source = str(row.get("sci_paper", query))
        return {"prompt": query, "source": source,
                "reference": str(row.get("expert_brief", answer)), "section": "all"}
    letters = list(dict.fromkeys(LETTER.findall(query)))
    if answer[:1] not in letters:
        raise DataError(f"{where}: the answer {answer!r} is not one of the options the query "
                        f"lists ({letters or 'none found'})")
    return {"prompt": query, "options": [f" {x}" for x in letters],
            "answer": letters.index(answer[:1])}
