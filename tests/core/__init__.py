"""The foundations: the sans-I/O core and its Lua scripts, layering, the generated
facade, the model-checked state machine, and the embedded servers."""
