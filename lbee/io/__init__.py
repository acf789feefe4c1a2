"""Reading and writing: images, user tables, sentence sets, relevance, caches and atomic writes."""
