import rune
