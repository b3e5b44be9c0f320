BxJ`Q;mBâÖoBZÍ‘Â$j±Âl|§BY€ŽBîŸúÁµwÀÝö@£\BÇ0ÃÁO·ìAÆ[AJpA¦ÍRBn§ê@×!€Â{4B´ÑÂÁö3B¡ÌSAùšCÂJ
LAŒþÁ