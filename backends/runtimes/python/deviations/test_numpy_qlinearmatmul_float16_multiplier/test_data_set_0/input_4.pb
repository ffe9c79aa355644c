
Bb_scaleJ8#