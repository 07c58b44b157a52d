"""User errors: input the user can fix. A stage ends on one with one line, no traceback (src/params/stage.py)."""


class UserError(Exception):
    """Input the user can fix; its message names the key or file and what is allowed."""


class ParamsError(UserError, ValueError):
    """A value in params.yaml (or one that does not fit the model or the data)."""


class ModelError(UserError, ValueError):
    """A model that cannot be loaded or is not a BERT-family encoder."""


class StorageError(UserError, OSError):
    """A file that could not be written (a full disk, no permission): the cause, in one line."""
