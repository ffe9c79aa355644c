
BYJY