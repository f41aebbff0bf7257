"""Link end to end: the machine, the release, the scripted model and the phone the suite drives."""
