"""``python -m dml_bench``: the ``dmlbench`` command."""

from .cli import main

if __name__ == "__main__":
    main(prog_name="dmlbench")
