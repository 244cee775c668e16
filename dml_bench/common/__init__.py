"""The ground stage: file and input safety that every stage uses.

- :mod:`.safe_write`: files written into results folders by a rename, never through a symlink,
  with plain output names;
- :mod:`.safe_yaml`: YAML read within bounds (size, nesting, nodes with aliases expanded);
- :mod:`.settings`: the user's settings file and the consent to import plug-ins;
- :mod:`.resources`: the memory an array may take, checked from its header before it is read.
"""
