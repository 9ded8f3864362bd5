"""The book's vocabulary: labels, the number formatter and the typography of pasted values. Outside every
result's key: nothing below it (``core``, ``runs``, ``analysis``) imports it."""
