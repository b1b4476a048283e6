"""Speech: recognition, synthesis and voice-activity detection. Pure audio in, text out (and
back): nothing here knows of calls or the database. See ``base`` for the interfaces."""
