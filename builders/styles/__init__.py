"""Question styles beyond the paper's creative question: label-targeted statements with critiques, grounded questions from infobox facts, and questions per information need."""
