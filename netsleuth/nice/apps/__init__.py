"""Controller apps bundled with the model checker (the NICE paper's subjects)."""
