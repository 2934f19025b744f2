"""WordPiece (BERT and any WordPiece tokenizer.json), stages by role: normalize (tables), pretokenize (the normalize + pre-tokenize
kernel), model (WordPiece), postprocess (the template, truncation, padding and the kernels), decode, formats (the
files), tokenizer (:class:`BertTokenizer`)."""
