"""How a build is made fast, behind one door (see `PageStore`)."""
