"""Dataset builders: article sources, the stages of the paper's workflow, question styles, labels and traffic kinds."""
