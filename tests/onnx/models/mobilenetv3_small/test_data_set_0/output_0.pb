
BlogitsJ(„‹º‚πŒ<tSFªÒkä=´÷™ΩhL•=p˝º¿Y|Ω“=6Z–<