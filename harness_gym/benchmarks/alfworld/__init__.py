"""ALFWorld target: household tasks in rooms of receptacles and objects (text only).

An embedded, seeded re-implementation of ALFWorld's TextWorld game: the PDDL dynamics,
the command grammar (classic ``put X in/on Y`` or the 2024 ``move X to Y``), the
observation strings and the six task types. With the optional ``alfworld`` package and
its game files, ``original.py`` runs the original games behind the same interface.
"""
